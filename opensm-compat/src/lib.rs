//! opensm.conf and ibqos.toml (placeholder until the readers land).
