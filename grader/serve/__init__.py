"""``grader serve``: the grader as an LTI 1.3 tool. Students open an assignment inside their course's platform (Moodle,
Canvas), upload a notebook or a .py, and read their report as soon as it is graded; the score goes back to the
platform's gradebook with Assignment and Grade Services. See docs/lms.md."""
