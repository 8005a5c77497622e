"""PLACEHOLDER: the fsstgpu.fsst Arrow extension type (files issue)."""
