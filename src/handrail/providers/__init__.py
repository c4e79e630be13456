"""Provider wire formats (placeholder: being written)."""
