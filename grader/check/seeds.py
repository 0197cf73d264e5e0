"""Seeds derived from (assignment, student, check): every case can be replayed.

A hidden check's random case is the student's own (classmates get different ones, so a hidden case passed around
is worth nothing); a public check's is everyone's: the student kit, `grader check` and the grader draw the same
inputs for it whoever runs it, as the templates promise.
"""

import hashlib

from grader.results import PUBLIC, Visibility

# Whose random case a public check draws: nobody's in particular.
EVERYONE = ""


def check_seed(assignment: str, student: str, check_id: str, visibility: Visibility) -> int:
    drawn_for = EVERYONE if visibility == PUBLIC else student
    digest = hashlib.sha256(f"{assignment}\0{drawn_for}\0{check_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big")
