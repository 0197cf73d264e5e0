"""attention_scoring (d2l 11.3): references, provided code and graded checks. Instructors only."""
