"""keras_additive_attention (the Keras AdditiveAttention layer in PyTorch, seed 002): references and checks."""
