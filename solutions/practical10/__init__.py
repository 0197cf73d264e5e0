"""practical10 (IST Deep Learning practical 10, seed 003): references, provided code and graded checks."""
