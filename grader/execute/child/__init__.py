"""The student's process (main.py): what runs inside the sandbox. It imports nothing else of ``grader``, only this
folder, NumPy and torch (an import-linter contract in pyproject.toml); it is started as a script with this folder on
its path, and the grader imports ``wire`` and ``calls`` from it as a package."""
