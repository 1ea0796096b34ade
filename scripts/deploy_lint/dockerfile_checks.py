"""Checks on docker/Dockerfile beyond syntax: what a `docker build` would trip over, and what the
images must promise (non-root, health check through /ready, the config's ports exposed)."""

import glob
import os
import posixpath
import re

from . import dockerfile_parser as dp
from . import libraries
from . import yaml_lines
from .sluice_config import SluiceConfig

ALLOWED_BASES = ("debian:bookworm-slim",)
CONFIG_IN_IMAGE = "/etc/sluice/sluice.yaml"
# scripts/build.sh builds into ${BUILD_DIR:-build}, relative to the repository root (WORKDIR).
BUILD_SUBDIR = "build"


class BuildLayout:
    """Where CMake puts each binary, relative to the build directory (from the CMake test
    registration), so a COPY --from=build path that no longer exists is caught."""

    def __init__(self, binary_dir=None, targets=None):
        self.binary_dir = binary_dir
        self.targets = dict(targets or {})

    def relative(self):
        if not self.binary_dir:
            return {}
        return {name: os.path.relpath(path, self.binary_dir) for name, path in self.targets.items()}


class DockerIgnore:
    """The patterns of a .dockerignore file (Go filepath.Match plus **, and ! exceptions)."""

    def __init__(self, path):
        self.rules = []
        if path and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                for raw in f:
                    line = raw.strip()
                    if not line or line.startswith("#"):
                        continue
                    negate = line.startswith("!")
                    pattern = posixpath.normpath(line.lstrip("!").strip().lstrip("/"))
                    self.rules.append((negate, self._regex(pattern)))

    @staticmethod
    def _regex(pattern):
        out = ""
        i = 0
        while i < len(pattern):
            c = pattern[i]
            if pattern.startswith("**/", i):
                out += "(?:.*/)?"
                i += 3
                continue
            if pattern.startswith("**", i):
                out += ".*"
                i += 2
                continue
            out += {"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c))
            i += 1
        return re.compile(f"^{out}$")

    def excluded(self, rel):
        """Whether `rel` (or a directory above it) is left out of the build context."""
        parts = rel.strip("/").split("/")
        result = False
        for k in range(1, len(parts) + 1):
            prefix = "/".join(parts[:k])
            for negate, regex in self.rules:
                if regex.match(prefix):
                    result = not negate
        return result


def _resolve(workdir, path):
    return posixpath.normpath(path if path.startswith("/") else posixpath.join(workdir, path))


class _StageState:
    """What a stage has so far: working directory, files copied in from the context
    (image path -> context path, directories end in /), user, environment."""

    def __init__(self, base=None):
        self.workdir = base.workdir if base else "/"
        self.copied = dict(base.copied) if base else {}
        self.user = base.user if base else None
        self.env = dict(base.env) if base else {}
        self.exposed = set(base.exposed) if base else set()
        self.healthcheck = base.healthcheck if base else None
        self.entrypoint = base.entrypoint if base else None
        self.cmd = base.cmd if base else None
        self.apt_packages = set(base.apt_packages) if base else set()
        self.apt_line = base.apt_line if base else None
        self.binaries = dict(base.binaries) if base else {}

    def has_file(self, image_path):
        for dest, src in self.copied.items():
            if dest == image_path or (dest.endswith("/") and image_path.startswith(dest)):
                return src if dest == image_path else src.rstrip("/") + "/" + image_path[len(dest):]
        return None


def _apt_installs(run_text):
    """Packages named after `apt-get install` in a shell-form RUN."""
    packages = set()
    for segment in re.split(r"&&|\|\||;|\|", run_text):
        words = segment.split()
        for k, word in enumerate(words):
            if word in ("apt-get", "apt") and "install" in words[k + 1:]:
                start = words.index("install", k) + 1
                packages.update(w for w in words[start:] if not w.startswith("-"))
                break
    return packages


def _is_root(user):
    name = user.split(":", 1)[0]
    return name in ("root", "0")


class DockerfileChecker:
    def __init__(self, repo, path, report, layout=None, ignore_path=None, binaries=None):
        self.repo = repo
        self.path = path
        self.report = report
        self.layout = layout or BuildLayout()
        self.ignore = DockerIgnore(ignore_path)
        # target name -> built binary on this machine, for the shared-library check
        self.binaries = binaries or {}
        self.df = None
        self.states = {}

    def error(self, line, message):
        self.report.error(self.path, line, message)

    def run(self):
        """Parses and checks; returns the parsed Dockerfile (None if it does not parse)."""
        self.report.checked_file(self.path, "Dockerfile")
        try:
            with open(self.path, encoding="utf-8") as f:
                self.df = dp.parse(f.read())
        except dp.ParseError as e:
            self.error(e.line, str(e))
            return None
        except OSError as e:
            self.error(None, str(e))
            return None
        for stage in self.df.stages:
            self._check_stage(stage)
        final = self.df.stages[-1]
        self._check_final(final, self.states[final.index])
        return self.df

    def stage_names(self):
        return [s.name for s in self.df.stages if s.name] if self.df else []

    def default_config(self):
        """The repository file the final image carries as /etc/sluice/sluice.yaml, if any."""
        if not self.df:
            return None
        source = self.states[self.df.stages[-1].index].has_file(CONFIG_IN_IMAGE)
        return os.path.join(self.repo, source) if source else None

    def healthcheck_of(self, target):
        stage = self.df.stage(target) if self.df else None
        return self.states[stage.index].healthcheck if stage else None

    # --- per stage -------------------------------------------------------------------------

    def _check_stage(self, stage):
        base_stage = self.df.stage(stage.base.lower()) if stage.base else None
        if base_stage is not None and base_stage.index < stage.index:
            state = _StageState(self.states[base_stage.index])
        else:
            base = dp.substitute(stage.base, self.df.global_args)
            if "$" in base:
                self.error(stage.line, f"FROM {stage.base}: unresolved build argument")
            elif base not in ALLOWED_BASES:
                self.error(stage.line,
                           f"FROM {base}: base images must be one of {', '.join(ALLOWED_BASES)} "
                           "or an earlier stage")
            state = _StageState()
        self.states[stage.index] = state
        for inst in stage.instructions:
            handler = getattr(self, f"_on_{inst.keyword.lower()}", None)
            if handler:
                handler(stage, state, inst)
        # A stage that declares what to run is an image meant to run; build stages declare none.
        if stage.all("ENTRYPOINT") or stage.all("CMD"):
            if state.user is None:
                self.error(stage.line, f"stage {stage.label()} runs a command but never sets USER "
                           "(it would run as root)")
            elif _is_root(state.user):
                self.error(stage.last("USER").line,
                           f"stage {stage.label()} runs as root (USER {state.user})")
            self._check_libraries(stage, state)

    def _on_workdir(self, stage, state, inst):
        state.workdir = _resolve(state.workdir, dp.substitute(inst.args_text, state.env))

    def _on_env(self, stage, state, inst):
        state.env.update(dp.env_of(inst))

    def _on_user(self, stage, state, inst):
        state.user = inst.words()[0]

    def _on_expose(self, stage, state, inst):
        for port in inst.words():
            state.exposed.add(int(port.split("/")[0].split("-")[0]))

    def _on_healthcheck(self, stage, state, inst):
        state.healthcheck = None if inst.args_text.upper() == "NONE" else inst

    def _on_entrypoint(self, stage, state, inst):
        state.entrypoint = inst
        state.cmd = None  # Docker resets an inherited CMD when ENTRYPOINT is set

    def _on_cmd(self, stage, state, inst):
        state.cmd = inst

    def _on_add(self, stage, state, inst):
        self._on_copy(stage, state, inst)

    def _on_copy(self, stage, state, inst):
        words = inst.words()
        sources, dest = words[:-1], dp.substitute(words[-1], state.env)
        dest_path = _resolve(state.workdir, dest)
        into_dir = dest.endswith("/") or len(sources) > 1 or dest in (".", "./")
        source_stage = inst.flags.get("from")
        if source_stage is not None:
            from_stage = self.df.stage(source_stage.lower())
            if from_stage is None or from_stage.index >= stage.index:
                self.error(inst.line, f"COPY --from={source_stage}: no earlier stage of that name")
                return
            from_state = self.states[from_stage.index]
            for src in sources:
                self._check_build_output(inst, from_stage, from_state, src, state, dest_path,
                                         into_dir)
            return
        for src in sources:
            if src.startswith("/") or ".." in src.split("/"):
                self.error(inst.line, f"{inst.keyword} {src}: sources must lie inside the context")
                continue
            if re.match(r"^[a-z]+://", src):
                self.error(inst.line, f"{inst.keyword} {src}: remote sources are not allowed")
                continue
            matches = glob.glob(os.path.join(self.repo, src))
            if not matches:
                self.error(inst.line, f"{inst.keyword} {src}: no such file in the repository")
                continue
            if self.ignore.excluded(src.rstrip("/")):
                self.error(inst.line, f"{inst.keyword} {src}: excluded by the .dockerignore file")
            is_dir = os.path.isdir(matches[0])
            base = posixpath.basename(src.rstrip("/"))
            if is_dir:
                target = dest_path + "/"
            else:
                target = posixpath.join(dest_path, base) if into_dir else dest_path
            state.copied[target] = src.rstrip("/") + ("/" if is_dir else "")

    def _check_build_output(self, inst, from_stage, from_state, src, state, dest_path, into_dir):
        build_root = _resolve(from_state.workdir, BUILD_SUBDIR) + "/"
        target = posixpath.join(dest_path, posixpath.basename(src)) if into_dir else dest_path
        if not src.startswith(build_root):
            return
        rel = src[len(build_root):]
        known = self.layout.relative()
        if not known:
            return
        names = [name for name, path in known.items() if path == rel]
        if not names:
            self.error(inst.line,
                       f"COPY --from={from_stage.label()} {src}: the build does not produce "
                       f"{rel} (known binaries: {', '.join(sorted(known.values()))})")
            return
        state.binaries[target] = names[0]

    def _on_run(self, stage, state, inst):
        text = " ".join(inst.exec_form) if inst.exec_form is not None else inst.args_text
        installed = _apt_installs(text)
        if installed:
            state.apt_packages |= installed
            state.apt_line = inst.line
        for m in re.finditer(r"(?:^|[\s;&|(=])((?:\./)?scripts/[A-Za-z0-9_./-]+)", text):
            script = m.group(1)
            rel = posixpath.normpath(script)
            in_repo = os.path.join(self.repo, rel)
            if not os.path.isfile(in_repo):
                self.error(inst.line, f"RUN {script}: no such script in the repository")
                continue
            if not os.access(in_repo, os.X_OK):
                self.error(inst.line, f"RUN {script}: not executable in the repository")
            if state.has_file(_resolve(state.workdir, rel)) is None:
                self.error(inst.line,
                           f"RUN {script}: not copied into stage {stage.label()} before this RUN")

    # --- the runtime images ----------------------------------------------------------------

    def _check_libraries(self, stage, state):
        for image_path, target in state.binaries.items():
            binary = self.binaries.get(target)
            if not binary or not os.path.exists(binary):
                self.report.note(self.path, f"stage {stage.label()}: {target} is not built here; "
                                 "its shared libraries were not checked")
                continue
            try:
                owners = libraries.packages_for(binary)
            except libraries.Unavailable as e:
                self.report.note(self.path, f"shared-library check skipped: {e}")
                return
            for soname, package in sorted(owners.items()):
                if package is None:
                    self.error(stage.line, f"stage {stage.label()}: {image_path} needs {soname}, "
                               "which no Debian package provides")
                elif (package not in state.apt_packages and
                      package not in libraries.BASE_IMAGE_PACKAGES):
                    self.error(state.apt_line or stage.line, f"stage {stage.label()}: {image_path} "
                               f"needs {soname}: install {package}")

    def _command(self, state):
        words = []
        if state.entrypoint:
            words += state.entrypoint.words()
        if state.cmd:
            words += state.cmd.words()
        return words

    def _check_final(self, stage, state):
        """The default target is the sluice image: what the brief and the manifests rely on."""
        if not stage.all("ENTRYPOINT"):
            self.error(stage.line, f"final stage {stage.label()} has no ENTRYPOINT")
        if state.healthcheck is None:
            self.error(stage.line, f"final stage {stage.label()} has no HEALTHCHECK")
        elif "/ready" not in " ".join(state.healthcheck.words()):
            self.error(state.healthcheck.line,
                       "the HEALTHCHECK must probe the admin /ready endpoint")
        command = self._command(state)
        config_path = None
        for k, word in enumerate(command):
            if word in ("--config", "-c") and k + 1 < len(command):
                config_path = command[k + 1]
            elif word.startswith("--config="):
                config_path = word.split("=", 1)[1]
        if config_path != CONFIG_IN_IMAGE:
            self.error((state.cmd or state.entrypoint or stage).line,
                       f"the image must run sluice --config {CONFIG_IN_IMAGE} (got {config_path})")
            return
        source = state.has_file(CONFIG_IN_IMAGE)
        if source is None:
            self.error(stage.line, f"no default config is copied to {CONFIG_IN_IMAGE}")
            return
        try:
            with open(os.path.join(self.repo, source), encoding="utf-8") as f:
                docs = yaml_lines.load_all(f.read())
        except (OSError, yaml_lines.YamlError) as e:
            self.error(stage.line, f"default config {source}: {e}")
            return
        config = SluiceConfig(docs[0] if docs else {})
        for port in [config.admin_port] + config.listener_ports:
            if port and port not in state.exposed:
                self.error(stage.line,
                           f"final stage: port {port} of {source} is not in EXPOSE")
        admin_env = state.env.get("SLUICE_ADMIN_PORT")
        if admin_env is not None and config.admin_port and admin_env != str(config.admin_port):
            self.error(stage.line, f"ENV SLUICE_ADMIN_PORT={admin_env}, but {source} puts the "
                       f"admin server on port {config.admin_port}")
