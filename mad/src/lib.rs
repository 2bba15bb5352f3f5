//! InfiniBand MAD wire formats (placeholder until the wire layer lands).
