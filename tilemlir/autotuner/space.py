"""The configs an autotuner tries: a list of dicts, a dict of lists (every combination), or a
callable of the factory's fixed arguments returning either; each config named by its values."""

from __future__ import annotations

import itertools
from typing import Any, Callable, Mapping, Sequence

Config = dict[str, Any]


def expand(configs: Sequence[Mapping[str, Any]] | Mapping[str, Sequence[Any]] | Callable[..., Any],
           parameters: Sequence[str], fixed: Mapping[str, Any], factory: str) -> list[Config]:
    """The configs of `configs` for factory `factory` (whose parameters are `parameters`), with the
    caller's `fixed` arguments taking the place of config values they name; duplicates dropped,
    order kept. ValueError names a config key the factory does not take, or an empty space."""
    if callable(configs):
        configs = configs(**fixed)
    if isinstance(configs, Mapping):
        configs = _combinations(configs, factory)
    if isinstance(configs, (str, bytes)) or not isinstance(configs, Sequence):
        raise TypeError(f"autotune configs of '{factory}' must be a list of dicts or a dict of lists, "
                        f"got {type(configs).__name__}")
    space: list[Config] = []
    for config in configs:
        if not isinstance(config, Mapping):
            raise TypeError(f"autotune config of '{factory}' must be a dict of factory arguments, got {config!r}")
        unknown = [name for name in config if name not in parameters]
        if unknown:
            raise ValueError(f"autotune config {dict(config)} names {', '.join(map(repr, unknown))}, which "
                             f"factory '{factory}' does not take (its parameters: {', '.join(parameters)})")
        effective = {name: fixed.get(name, value) for name, value in config.items()}
        if effective not in space:
            space.append(effective)
    if not space:
        raise ValueError(f"autotune of '{factory}' has no configs to try")
    return space


def _combinations(grid: Mapping[str, Sequence[Any]], factory: str) -> list[Config]:
    names = list(grid)
    for name in names:
        values = grid[name]
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            raise TypeError(f"autotune configs of '{factory}': {name!r} needs a non-empty list of values, "
                            f"got {values!r}")
    return [dict(zip(names, values)) for values in itertools.product(*(grid[n] for n in names))]


def label(config: Mapping[str, Any]) -> str:
    """'block_M=64, num_stages=3' (an empty config: 'defaults')."""
    return ", ".join(f"{name}={value!r}" for name, value in config.items()) or "defaults"
