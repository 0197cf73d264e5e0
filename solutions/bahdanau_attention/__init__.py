"""bahdanau_attention (Bahdanau additive attention, seed 004): references, provided code and graded checks."""
