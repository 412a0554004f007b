"""YAML read with limits (PyYAML's safe loader): the one way the package and its training
jobs read a YAML document (configs, recipes, benchmark protocols).

A document whose aliases would expand it past :data:`MAX_YAML_VALUES` values (an "alias
bomb": a few hundred bytes that stand for billions of values, which any walk over the loaded
data, a ``repr`` or a copy, then expands) or that refers to itself is refused once it is
composed, before any value is built; so is one nested too deeply. A file is read only when it
is a regular file of at most :data:`MAX_YAML_BYTES` (:func:`keltis_env.core.input_files.read_bounded`).
"""

from __future__ import annotations

from typing import Any

import yaml

#: the largest config file read (bytes), and the most values a YAML document may stand for
#: with its aliases expanded (the largest shipped config holds a few hundred)
MAX_YAML_BYTES = 1024 * 1024
MAX_YAML_VALUES = 100_000


class YamlTooLargeError(yaml.YAMLError):
    """A YAML document whose aliases expand past :data:`MAX_YAML_VALUES` values, or refer to
    themselves (:class:`BoundedLoader`)."""


def expanded_size(root: yaml.Node, most: int = MAX_YAML_VALUES) -> int:
    """How many values the YAML node ``root`` stands for with every alias expanded (each
    shared node counted wherever it is used), computed without expanding anything; a
    :class:`YamlTooLargeError` once it passes ``most`` or when a node contains itself."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        if children_done:
            open_nodes.discard(key)
            sizes[key] = min(most + 1, 1 + sum(sizes[id(c)] for c in children))
            continue
        if key in open_nodes:
            raise YamlTooLargeError("an alias refers to a node that contains it (a value that would be infinite)")
        open_nodes.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise YamlTooLargeError("an alias refers to a node that contains it (a value that would be infinite)")
            if id(child) not in sizes:
                stack.append((child, False))
    total = sizes[id(root)]
    if total > most:
        raise YamlTooLargeError(f"its aliases expand it to more than {most:,} values (an alias bomb?); write the "
                                "values out, or use fewer aliases")
    return total


class BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a document that its aliases expand past
    :data:`MAX_YAML_VALUES` values (:func:`expanded_size`, checked on the composed nodes,
    before any value is built)."""

    def compose_document(self) -> yaml.Node:
        node = super().compose_document()
        expanded_size(node)
        return node


def load_yaml(text: str, loader: type[BoundedLoader] = BoundedLoader) -> Any:
    """The YAML document ``text`` read by ``loader`` (safe types only, bounded); a
    :class:`yaml.YAMLError` for what is not YAML or too large, a document nested too deeply
    included."""
    try:
        return yaml.load(text, Loader=loader)  # a SafeLoader: plain data only
    except RecursionError:
        raise YamlTooLargeError("it is nested too deeply") from None


__all__ = ["MAX_YAML_BYTES", "MAX_YAML_VALUES", "BoundedLoader", "YamlTooLargeError", "expanded_size", "load_yaml"]
