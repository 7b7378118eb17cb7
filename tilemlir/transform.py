"""`from tilemlir.transform import PassConfigKey`: where TileLang code imports its pass-config keys from
(`tilelang.transform`). The keys and what they do here: tilemlir.pass_configs, docs/tilelang.md."""

from tilemlir.pass_configs import PassConfigKey

__all__ = ["PassConfigKey"]
