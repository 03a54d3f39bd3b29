"""The YAML loader for run configs, shared by the CLI (``umbra submit FILE``) and the web
form's YAML paste/upload, so that one text reads the same through both doors."""
from __future__ import annotations

import re

import yaml

# A run config is ~40 short lines: a longer text is not one (the CLI reads no more of a file).
MAX_YAML_BYTES = 64 * 1024
_SURROGATE = re.compile("[\ud800-\udfff]")


class ConfigLoader(yaml.SafeLoader):
    """pyyaml's safe loader (no Python objects) that reads ``1e-6`` as a number (YAML 1.1
    takes it for a string, which the server's strict check refuses for ``learning_rate``),
    refuses a key given twice (pyyaml would keep the last one silently) and a string holding
    a lone surrogate (a ``"\\ud800"`` escape: not text that UTF-8, the pages or the database
    can hold)."""

    def construct_scalar(self, node):
        value = super().construct_scalar(node)
        if isinstance(value, str) and (bad := _SURROGATE.search(value)):
            raise yaml.constructor.ConstructorError(
                None, None, f"a string holds the lone surrogate \\u{ord(bad.group()):04x} (not Unicode text)",
                node.start_mark)
        return value

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: pyyaml's own error follows
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(None, None, f"key {str(key)[:60]!r} is given twice",
                                                        key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


ConfigLoader.add_implicit_resolver("tag:yaml.org,2002:float",
                                   re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
                                   list("-+0123456789"))
