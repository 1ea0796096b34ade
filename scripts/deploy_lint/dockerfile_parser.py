"""A small, strict Dockerfile parser: the subset of the Dockerfile reference our files use.

Strict where Docker is lenient in ways that hide mistakes: an exec-form array that is not valid
JSON (Docker silently runs it as a shell string), lowercase or unknown instructions, an empty
line inside a continuation, a continuation that never ends, heredocs (not understood here).
"""

import json
import re
import shlex

INSTRUCTIONS = frozenset([
    "ADD", "ARG", "CMD", "COPY", "ENTRYPOINT", "ENV", "EXPOSE", "FROM", "HEALTHCHECK", "LABEL",
    "MAINTAINER", "ONBUILD", "RUN", "SHELL", "STOPSIGNAL", "USER", "VOLUME", "WORKDIR"
])
EXEC_FORM = frozenset(["CMD", "ENTRYPOINT", "RUN", "SHELL"])
DIRECTIVES = frozenset(["syntax", "escape", "check"])
COPY_FLAGS = {
    "COPY": frozenset(["from", "chown", "chmod", "link", "parents", "exclude"]),
    "ADD": frozenset(["chown", "chmod", "link", "checksum", "keep-git-dir", "exclude"]),
}
HEALTHCHECK_FLAGS = frozenset(["interval", "timeout", "start-period", "start-interval", "retries"])
_HEREDOC = re.compile(r"<<-?\s*[\"']?[A-Za-z_][A-Za-z0-9_]*[\"']?\s*$|<<-?[\"']?[A-Z_]+[\"']?\s")


class ParseError(Exception):
    def __init__(self, line, message):
        super().__init__(message)
        self.line = line


class Instruction:
    """One instruction: keyword, the raw argument text (continuations joined), its flags
    (--name=value before the arguments), and the exec-form list when written as JSON."""

    def __init__(self, keyword, text, line):
        self.keyword = keyword
        self.text = text
        self.line = line
        self.flags = {}
        self.args_text = text
        self.exec_form = None

    def words(self):
        """Shell-like split of the arguments (exec form: the JSON list itself)."""
        if self.exec_form is not None:
            return list(self.exec_form)
        try:
            return shlex.split(self.args_text, comments=False)
        except ValueError as e:
            raise ParseError(self.line, f"{self.keyword}: {e}") from None


class Stage:
    def __init__(self, index, base, name, line):
        self.index = index
        self.base = base
        self.name = name
        self.line = line
        self.instructions = []

    def label(self):
        return self.name if self.name else f"#{self.index}"

    def all(self, keyword):
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword):
        found = self.all(keyword)
        return found[-1] if found else None


class Dockerfile:
    def __init__(self):
        self.directives = {}
        self.global_args = {}
        self.stages = []

    def stage(self, name):
        for s in self.stages:
            if s.name == name or str(s.index) == name:
                return s
        return None


def _logical_lines(text):
    """(first line number, joined text) for each instruction, after directives and comments."""
    lines = text.splitlines()
    directives = {}
    i = 0
    while i < len(lines):
        m = re.match(r"^#\s*([A-Za-z]+)\s*=\s*(\S+)\s*$", lines[i])
        if not m or m.group(1).lower() not in DIRECTIVES:
            break
        directives[m.group(1).lower()] = m.group(2)
        i += 1
    escape = directives.get("escape", "\\")
    if escape not in ("\\", "`"):
        raise ParseError(1, f"escape directive must be \\ or `, got {escape!r}")
    out = []
    pending = None
    start = 0
    for n in range(i, len(lines)):
        raw = lines[n]
        stripped = raw.strip()
        if stripped.startswith("#"):
            continue
        if not stripped:
            if pending is not None:
                raise ParseError(n + 1, "empty line inside a continued instruction")
            continue
        body = raw.rstrip()
        continued = body.endswith(escape)
        if continued:
            body = body[:-1]
        if pending is None:
            pending, start = body, n + 1
        else:
            pending += " " + body.strip()
        if not continued:
            out.append((start, pending.strip()))
            pending = None
    if pending is not None:
        raise ParseError(start, "the last instruction ends with a line continuation")
    return directives, out


def _take_flags(instruction, allowed):
    rest = instruction.args_text
    while rest.startswith("--"):
        m = re.match(r"^--([a-z-]+)(?:=(\S*))?(?:\s+|$)", rest)
        if not m:
            raise ParseError(instruction.line, f"{instruction.keyword}: malformed flag in {rest!r}")
        if m.group(1) not in allowed:
            raise ParseError(instruction.line,
                             f"{instruction.keyword}: unknown flag --{m.group(1)}")
        instruction.flags[m.group(1)] = m.group(2) if m.group(2) is not None else "true"
        rest = rest[m.end():]
    instruction.args_text = rest


def _parse_exec_form(instruction, text):
    """The JSON list if `text` is exec form; Docker takes anything not parseable as a shell
    string, so a near-miss like ['a', 'b'] is an error here."""
    if not text.lstrip().startswith("["):
        return None
    try:
        value = json.loads(text)
    except ValueError as e:
        raise ParseError(instruction.line,
                         f"{instruction.keyword}: exec form is not valid JSON ({e}); Docker "
                         "would run it as a shell command") from None
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ParseError(instruction.line,
                         f"{instruction.keyword}: exec form must be a non-empty list of strings")
    return value


def substitute(text, variables):
    """${VAR}, ${VAR:-default} and $VAR from `variables` (unknown ones stay as written)."""

    def repl(m):
        name = m.group(1) or m.group(3)
        if name in variables and variables[name] != "":
            return variables[name]
        if m.group(2) is not None:
            return m.group(2)
        return m.group(0)

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)", repl,
                  text)


def parse(text):
    """A Dockerfile from its text. Raises ParseError naming the line."""
    directives, logical = _logical_lines(text)
    df = Dockerfile()
    df.directives = directives
    for line, body in logical:
        m = re.match(r"^(\S+)(?:\s+(.*))?$", body)
        word, rest = m.group(1), (m.group(2) or "").strip()
        if word.upper() not in INSTRUCTIONS:
            raise ParseError(line, f"unknown instruction {word!r}")
        if word != word.upper():
            raise ParseError(line, f"write instructions in upper case: {word!r}")
        if not rest:
            raise ParseError(line, f"{word} needs arguments")
        inst = Instruction(word, rest, line)
        if word in ("RUN", "COPY", "ADD") and _HEREDOC.search(rest):
            raise ParseError(line, f"{word}: heredocs are not supported by this lint")
        if word == "FROM":
            _take_flags(inst, frozenset(["platform"]))
            parts = inst.args_text.split()
            if len(parts) == 1:
                base, name = parts[0], None
            elif len(parts) == 3 and parts[1].upper() == "AS":
                base, name = parts[0], parts[2].lower()
                if not re.match(r"^[a-z][a-z0-9_.-]*$", name):
                    raise ParseError(line, f"FROM: bad stage name {parts[2]!r}")
            else:
                raise ParseError(line, "FROM: expected `FROM image [AS name]`")
            if name and df.stage(name):
                raise ParseError(line, f"FROM: stage name {name!r} used twice")
            df.stages.append(Stage(len(df.stages), base, name, line))
            continue
        if not df.stages:
            if word != "ARG":
                raise ParseError(line, f"{word} before the first FROM (only ARG may come first)")
            for arg in inst.words():
                key, _, value = arg.partition("=")
                df.global_args[key] = value
            continue
        if word in COPY_FLAGS:
            _take_flags(inst, COPY_FLAGS[word])
            inst.exec_form = _parse_exec_form(inst, inst.args_text)
            if len(inst.words()) < 2:
                raise ParseError(line, f"{word}: needs at least one source and a destination")
        elif word in ("RUN",):
            _take_flags(inst, frozenset(["mount", "network", "security"]))
            inst.exec_form = _parse_exec_form(inst, inst.args_text)
        elif word in EXEC_FORM:
            inst.exec_form = _parse_exec_form(inst, inst.args_text)
            if word == "SHELL" and inst.exec_form is None:
                raise ParseError(line, "SHELL must be in exec (JSON) form")
        elif word == "HEALTHCHECK":
            _take_flags(inst, HEALTHCHECK_FLAGS)
            cmd = inst.args_text
            if cmd.upper() != "NONE":
                if not cmd.startswith("CMD ") and not cmd.startswith("CMD["):
                    raise ParseError(line, "HEALTHCHECK: expected CMD ... or NONE")
                inst.args_text = cmd[3:].strip()
                inst.exec_form = _parse_exec_form(inst, inst.args_text)
        elif word == "EXPOSE":
            for port in inst.words():
                if not re.match(r"^[0-9]+(-[0-9]+)?(/(tcp|udp))?$", port):
                    raise ParseError(line, f"EXPOSE: bad port {port!r}")
        elif word == "USER":
            if len(inst.words()) != 1:
                raise ParseError(line, "USER: expected user[:group]")
        elif word == "ENV":
            words = inst.words()
            if not all("=" in w for w in words) and len(words) < 2:
                raise ParseError(line, "ENV: expected key=value")
        df.stages[-1].instructions.append(inst)
    if not df.stages:
        raise ParseError(1, "no FROM instruction")
    return df


def env_of(inst):
    """key -> value pairs of an ENV instruction."""
    words = inst.words()
    if all("=" in w for w in words):
        return dict(w.split("=", 1) for w in words)
    return {words[0]: " ".join(words[1:])}
