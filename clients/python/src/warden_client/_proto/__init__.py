"""Generated from crates/warden-proto/proto by scripts/regen_proto.py; do not edit."""
