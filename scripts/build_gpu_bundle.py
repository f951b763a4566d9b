"""Builds .gpu/: the Python packages that the GPU machine's image lacks, for its CPython 3.12 on Linux x86_64.

    python scripts/build_gpu_bundle.py [--out .gpu] [--extras train,unsloth,liger] [--python PATH]

What goes in: the project's dependencies and the extras that GPU runs use (read from pyproject.toml), with their
whole dependency tree as pip resolves it for the target, less what the image already has
(scripts/gpu-image-packages.txt). How: (1) a scratch Python 3.12 environment in which the image's packages stand
as installed metadata only, so that pip does not resolve into them; (2) `pip install --dry-run --report` into it
for the target platform; (3) `pip download` of exactly the wheels it chose; (4) unpack them into one folder, trim
what a run never loads, and write .gpu/site.tgz, .gpu/env.sh and .gpu/bundle.txt (name==version, one a line).

On the GPU machine, at the checkout's root:   source .gpu/env.sh && pip install --no-deps --no-build-isolation -e .

Needs PyPI and a Python 3.12 here (the target's version decides which wheels and environment markers apply):
--python, $PYTHON312, python3.12 on PATH, or a pyenv 3.12.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGE_PACKAGES = ROOT / "scripts" / "gpu-image-packages.txt"
BUNDLE_EXTRAS = ("train", "unsloth", "liger")
TARGET = ["--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp", "--abi", "cp312", "--abi",
          "abi3", "--abi", "none"] + [arg for platform in (
              "manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
              "manylinux2014_x86_64", "manylinux1_x86_64", "linux_x86_64", "any") for arg in ("--platform", platform)]
# The image's torch is built for CUDA 13.0: bitsandbytes' libraries for other CUDA versions are never loaded.
CUDA_LIBRARY_TAG = "cuda130"
# Top-level folders some wheels ship beside their package (test suites, Unsloth's web studio).
TRIMMED_TOP_LEVEL = ("studio", "test", "tests")
UNKNOWN_VERSION = "9999"  # an image package whose version nobody recorded: assumed to satisfy any requirement

ENV_SH = """\
# Written by scripts/build_gpu_bundle.py. On the GPU machine, at the checkout's root:  source .gpu/env.sh
# Unpacks the bundle into /tmp/site, puts it on PYTHONPATH, and sets an offline environment.
mkdir -p /tmp/site && tar xzf .gpu/site.tgz -C /tmp/site || return 1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 UNSLOTH_DISABLE_STATISTICS=1 TQDM_NOTEBOOK=false
"""


class BundleError(Exception):
    """Something this script cannot work around; the message says what to do."""


def normalize(name: str) -> str:
    """PEP 503 name: case and runs of -_. do not matter."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class ImagePackages:
    versions: dict[str, str | None] = field(default_factory=dict)  # normalized name -> version (None: unknown)
    prefixes: tuple[str, ...] = ()
    never: dict[str, str] = field(default_factory=dict)  # normalized name -> why it is never bundled
    pins: dict[str, str] = field(default_factory=dict)  # "name==version" -> why that version

    def covers(self, name: str) -> bool:
        name = normalize(name)
        return name in self.versions or name in self.never or name.startswith(self.prefixes)


def read_image_packages(path: Path = IMAGE_PACKAGES) -> ImagePackages:
    image = ImagePackages()
    prefixes = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("!"):
            name, _, reason = line[1:].partition(" ")
            image.never[normalize(name)] = reason.strip()
        elif line.startswith("+") and "==" in line:
            pin, _, reason = line[1:].partition(" ")
            image.pins[pin] = reason.strip()
        elif line.endswith("-*"):
            prefixes.append(normalize(line[:-1]))
        elif re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*(==[A-Za-z0-9.+!_-]+)?", line):
            name, _, version = line.partition("==")
            image.versions[normalize(name)] = version or None
        else:
            raise BundleError(f"{path}:{number}: {raw!r} is not NAME, NAME==VERSION, NAME-*, !NAME or +NAME==VERSION")
    image.prefixes = tuple(prefixes)
    return image


def project_requirements(pyproject: Path = ROOT / "pyproject.toml", extras=BUNDLE_EXTRAS) -> list[str]:
    """The project's own dependencies plus those of ``extras``, as pyproject.toml states them."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    optional = project.get("optional-dependencies", {})
    missing = [extra for extra in extras if extra not in optional]
    if missing:
        raise BundleError(f"pyproject.toml has no extra {missing[0]!r} (it has: {', '.join(sorted(optional))})")
    requirements = list(project.get("dependencies", []))
    for extra in extras:
        requirements += optional[extra]
    return requirements


def check_host() -> None:
    import platform

    if sys.platform != "linux" or platform.machine() != "x86_64":
        raise BundleError(f"run this on Linux x86_64 (the image's platform), not {sys.platform} {platform.machine()}")


def find_python312(explicit: str | None) -> str:
    candidates = [explicit, os.environ.get("PYTHON312"), shutil.which("python3.12")]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12")), reverse=True)
    for candidate in filter(None, candidates):
        probe = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 12))"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == "True":
            return candidate
    raise BundleError("no Python 3.12 found (the GPU image's version); pass --python PATH or set PYTHON312")


def stub_environment(python312: str, image: ImagePackages, work: Path) -> Path:
    """A venv whose site-packages holds metadata-only stand-ins for the image's packages."""
    venv = work / "image-env"
    subprocess.run([python312, "-m", "venv", "--without-pip", str(venv)], check=True)
    interpreter = venv / "bin" / "python"
    site = Path(subprocess.run([str(interpreter), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    stand_ins = {**image.versions, **{name: None for name in image.never}}
    for name, version in stand_ins.items():
        version = version or UNKNOWN_VERSION
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (info / "INSTALLER").write_text("gpu-image-stand-in\n")
    return interpreter


def pip(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join(line for line in result.stderr.splitlines() if "is ignored: it is neither" not in line)
        raise BundleError(f"pip {args[0]} failed:\n{tail[-3000:]}")
    return result


def resolve(interpreter: Path, requirements: list[str], image: ImagePackages, work: Path) -> list[dict]:
    """What pip would install into the image for ``requirements``: [{name, version, url}] from its report."""
    report, constraints = work / "report.json", work / "constraints.txt"
    constraints.write_text("".join(f"{pin}\n" for pin in image.pins))
    # pip refuses --platform for an install without --target (which would ignore the stand-ins), so the scratch
    # environment itself is the target: CPython 3.12 on this Linux x86_64; download() then insists on the
    # image's platform tags, and fails if pip chose a wheel that the image cannot load.
    pip("--python", str(interpreter), "install", "--dry-run", "--quiet", "--report", str(report),
        "--only-binary=:all:", "--constraint", str(constraints), *requirements)
    chosen = json.loads(report.read_text())["install"]
    return [{"name": normalize(item["metadata"]["name"]), "version": item["metadata"]["version"],
             "url": item["download_info"]["url"]} for item in chosen]


def split_image(resolved: list[dict], image: ImagePackages) -> tuple[list[dict], list[str]]:
    """(what to bundle, warnings). An image package pip wants to change is bundled when the image's version is
    known not to fit (it then shadows the image's copy); with an unknown version it is left out, with a warning."""
    bundle, warnings = [], []
    for item in resolved:
        name = item["name"]
        if name in image.never:
            warnings.append(f"{name} {item['version']}: left out ({image.never[name]})")
        elif name in image.versions and image.versions[name]:
            warnings.append(f"{name}: the image has {image.versions[name]}, the project needs {item['version']}: "
                            "bundled, shadowing the image's copy")
            bundle.append(item)
        elif image.covers(name):
            warnings.append(f"{name}: pip wanted {item['version']} and the image's version is not recorded: left out;"
                            f" record it in {IMAGE_PACKAGES.name} if the run fails on it")
        else:
            bundle.append(item)
    return bundle, warnings


def download(bundle: list[dict], wheels: Path) -> None:
    pip("download", "--quiet", "--no-deps", "--dest", str(wheels), *TARGET,
        *(f"{item['name']}=={item['version']}" for item in bundle))


def unpack(wheels: Path, site: Path) -> None:
    for wheel in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    # A wheel's NAME.data/{purelib,platlib} belong on the path itself; its scripts and headers are not needed.
    for data in site.glob("*.data"):
        for kind in ("purelib", "platlib"):
            for item in (data / kind).glob("*") if (data / kind).is_dir() else ():
                shutil.copytree(item, site / item.name, dirs_exist_ok=True) if item.is_dir() else \
                    shutil.copy2(item, site / item.name)
        shutil.rmtree(data)


def trim(site: Path) -> list[str]:
    removed = []
    for name in TRIMMED_TOP_LEVEL:
        if (site / name).exists():
            shutil.rmtree(site / name)
            removed.append(f"{name}/")
    for library in site.glob("bitsandbytes/libbitsandbytes_*.so"):
        if CUDA_LIBRARY_TAG not in library.name and "cpu" not in library.name:
            library.unlink()
            removed.append(library.name)
    for cache in list(site.rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)
    return removed


def write_bundle(site: Path, out: Path, bundle: list[dict]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    archive = out / "site.tgz"
    staging = out / "site.tgz.partial"
    with tarfile.open(staging, "w:gz", compresslevel=9) as tar:
        for path in sorted(site.iterdir()):
            tar.add(path, arcname=path.name)
    staging.replace(archive)
    (out / "env.sh").write_text(ENV_SH)
    (out / "bundle.txt").write_text("".join(f"{item['name']}=={item['version']}\n" for item in bundle))
    return archive


def ignore_in_git(out: Path) -> None:
    """Keep the bundle out of commits even where .gitignore does not name it."""
    try:
        git_dir = subprocess.run(["git", "rev-parse", "--git-common-dir"], cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout.strip()
        relative = out.resolve().relative_to(ROOT)
    except (subprocess.CalledProcessError, OSError, ValueError):
        return
    exclude = (ROOT / git_dir / "info" / "exclude").resolve()
    entry = f"/{relative.as_posix()}/"
    lines = exclude.read_text().splitlines() if exclude.is_file() else []
    if entry not in lines:
        exclude.parent.mkdir(parents=True, exist_ok=True)
        exclude.write_text("\n".join(lines + [entry]) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / ".gpu", help="folder to write (default: .gpu)")
    parser.add_argument("--extras", default=",".join(BUNDLE_EXTRAS), help="pyproject extras to bundle")
    parser.add_argument("--python", help="a Python 3.12 interpreter (the target's version)")
    parser.add_argument("--keep-work", action="store_true", help="keep the scratch folder (wheels, pip's report)")
    args = parser.parse_args(argv)
    try:
        check_host()
        image = read_image_packages()
        requirements = project_requirements(extras=tuple(filter(None, args.extras.split(","))))
        python312 = find_python312(args.python)
        work = Path(tempfile.mkdtemp(prefix="gpu-bundle-"))
        try:
            print(f"resolving {len(requirements)} requirements for CPython 3.12 manylinux x86_64 "
                  f"(the image's {len(image.versions)} packages stand as installed)", file=sys.stderr)
            resolved = resolve(stub_environment(python312, image, work), requirements, image, work)
            bundle, warnings = split_image(resolved, image)
            for warning in warnings:
                print(f"warning: {warning}", file=sys.stderr)
            print(f"downloading {len(bundle)} wheels", file=sys.stderr)
            (work / "wheels").mkdir()
            download(bundle, work / "wheels")
            site = work / "site"
            unpack(work / "wheels", site)
            removed = trim(site)
            archive = write_bundle(site, args.out, bundle)
            ignore_in_git(args.out)
        finally:
            if args.keep_work:
                print(f"scratch folder kept: {work}", file=sys.stderr)
            else:
                shutil.rmtree(work, ignore_errors=True)
    except BundleError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    size = archive.stat().st_size / 2**20
    print("\n".join(f"{item['name']}=={item['version']}" for item in bundle))
    print(f"{archive}: {size:.1f} MiB, {len(bundle)} packages; trimmed: {', '.join(removed) or 'nothing'}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
