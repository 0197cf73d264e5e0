"""Execute stage: run a submission in a separate, limited process and call into it with plain data.

What a check holds to call into that process (``StudentCode``, ``StudentFunction``, ``StudentObject``) is the checks'
API and lives in ``grader.check.student``; this package is the process, its sandbox and the wire.
"""

from grader.execute.arguments import Arg, Returned
from grader.execute.limits import Limits
from grader.execute.process import LoadedUnit, StudentProcess

__all__ = ["Arg", "Limits", "LoadedUnit", "Returned", "StudentProcess"]
