"""Mutating parsed documents for the never-raises tests of the format."""


def mutate(value, path: list[int], replacement):
    """Replace the node that `path` picks (indexes taken modulo each container's size)."""
    if not path or not isinstance(value, (dict, list)) or not value:
        return replacement
    keys = list(value) if isinstance(value, dict) else list(range(len(value)))
    key = keys[path[0] % len(keys)]
    value[key] = mutate(value[key], path[1:], replacement)
    return value
