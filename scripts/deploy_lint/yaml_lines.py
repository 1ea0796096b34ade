"""A strict YAML loader that remembers where each mapping and list came from.

PyYAML's safe loader keeps the last of two equal keys without a word; a manifest with a
duplicated key (two `ports:`) then silently loses one. Here that is an error, and every mapping
and list carries its 1-based line so findings can point at it.
"""

import yaml


class YamlError(Exception):
    def __init__(self, line, message):
        super().__init__(message)
        self.line = line


class LineDict(dict):
    line = None
    key_lines = None

    def line_of(self, key):
        """The line of `key` if present, else of the mapping itself."""
        return (self.key_lines or {}).get(key, self.line)


class LineList(list):
    line = None


class _Loader(yaml.SafeLoader):
    pass


def _construct_mapping(loader, node):
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise YamlError(key_node.start_mark.line + 1, f"duplicate key {key!r}")
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _construct_sequence(loader, node):
    out = LineList(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node.start_mark.line + 1
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def load_all(text):
    """Every document of a YAML stream (empty documents dropped). Raises YamlError."""
    try:
        return [doc for doc in yaml.load_all(text, Loader=_Loader) if doc is not None]
    except YamlError:
        raise
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        raise YamlError(line, f"{e.problem or e}") from None
    except yaml.YAMLError as e:
        raise YamlError(None, str(e)) from None


def block_indent(text, key_line):
    """Indentation of the block scalar whose `key: |` is at key_line (1-based): its content
    starts on the next line, so an embedded file's line L is line key_line + L here."""
    lines = text.splitlines()
    for line in lines[key_line:]:
        if line.strip():
            return len(line) - len(line.lstrip())
    return 0
