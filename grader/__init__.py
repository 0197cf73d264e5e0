"""Auto-grader for attention-mechanism assignments: sandboxed execution, NumPy/PyTorch references, HTML feedback."""

__version__ = "0.1.0"
