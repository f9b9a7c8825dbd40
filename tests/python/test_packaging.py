"""How the package is built and found: the module pip installed from ./python loads the
libkiln.so of the build under test through its rpath (no LD_LIBRARY_PATH); the type
stubs ship and cover the public API; and KILN_USE_PKG_CONFIG=1 builds the extension
against an installed kiln (`cmake --install` into a temporary prefix, found through
pkg-config), whose module then loads the installed library."""

import ast
import glob
import os
import re
import subprocess
import sys
import zipfile

import pytest

import kiln
from conftest import ROOT, build_dir

PROBE = ("import kiln, numpy as np\n"
         "f = kiln.compile_hlo('HloModule m\\nENTRY e {\\n  x = f32[2] parameter(0)\\n"
         "  ROOT y = f32[2] add(x, x)\\n}\\n')\n"
         "assert (f(np.array([1, 2], np.float32)) == [2, 4]).all()\n"
         "print(kiln.__file__)\n"
         "print([l.split()[-1] for l in open('/proc/self/maps') if 'libkiln.so' in l][0])\n")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    env.update(extra)
    return env


def probe(env):
    r = subprocess.run([sys.executable, "-c", PROBE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, env=env, cwd="/", timeout=120)
    assert r.returncode == 0, r.stderr
    module, lib = r.stdout.split()
    return module, os.path.realpath(lib)


def header_version():
    text = open(os.path.join(ROOT, "include", "kiln", "kiln.h")).read()
    return tuple(int(re.search(r"#define KILN_VERSION_%s (\d+)" % k, text).group(1)) for k in ("MAJOR", "MINOR", "PATCH"))


def test_installed_module_loads_the_build_library_by_rpath():
    module, lib = probe(clean_env())
    assert "site-packages" in module
    assert os.path.dirname(lib) == os.path.realpath(build_dir()), lib
    assert kiln.version_info[:2] == header_version()[:2]


def test_type_stubs_cover_the_api():
    pkg = os.path.dirname(kiln.__file__)
    assert os.path.isfile(os.path.join(pkg, "py.typed"))
    tree = ast.parse(open(os.path.join(pkg, "__init__.pyi")).read())
    declared = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            declared.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            declared.add(node.target.id)
        elif isinstance(node, ast.Assign):
            declared.update(t.id for t in node.targets)
    missing = set(kiln.__all__) - declared
    assert not missing, "kiln/__init__.pyi lacks %s" % sorted(missing)
    methods = {n.name for c in tree.body if isinstance(c, ast.ClassDef) and c.name == "Model" for n in c.body
               if isinstance(n, ast.FunctionDef)}
    public = {m for m in dir(kiln.Model) if not m.startswith("_")}
    assert public <= methods, sorted(public - methods)


def test_pkg_config_build_against_installed_kiln(tmp_path):
    prefix = tmp_path / "prefix"
    r = subprocess.run(["cmake", "--install", build_dir(), "--prefix", str(prefix)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
    assert r.returncode == 0, r.stdout
    pcs = glob.glob(str(prefix / "**" / "kiln.pc"), recursive=True)
    assert pcs, "cmake --install wrote no kiln.pc"
    env = clean_env(KILN_USE_PKG_CONFIG="1", PKG_CONFIG_PATH=os.path.dirname(pcs[0]),
                    KILN_BUILD_DIR=str(tmp_path / "no-build-here"), KILN_INCLUDE_DIR=str(tmp_path / "no-include"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                        "--no-build-isolation", "-w", str(tmp_path / "wheel"), os.path.join(ROOT, "python")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stdout
    (wheel,) = glob.glob(str(tmp_path / "wheel" / "kiln-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path / "site")
        names = z.namelist()
    assert "kiln/__init__.pyi" in names and "kiln/py.typed" in names
    module, lib = probe(clean_env(PYTHONPATH=str(tmp_path / "site")))
    assert module.startswith(str(tmp_path / "site"))
    assert lib.startswith(os.path.realpath(prefix)), lib


def test_setup_reports_a_missing_library(tmp_path):
    env = clean_env(KILN_BUILD_DIR=str(tmp_path / "empty"))
    os.makedirs(tmp_path / "empty")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                        "--no-build-isolation", "-w", str(tmp_path / "wheel"), os.path.join(ROOT, "python")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env,
                       timeout=600)
    assert r.returncode != 0 and "no libkiln.so in" in r.stdout and "KILN_BUILD_DIR" in r.stdout, r.stdout


@pytest.mark.parametrize("module", ["kiln._kiln"])
def test_extension_is_c(module):
    # The extension is one C file over the public header only.
    src = open(os.path.join(ROOT, "python", "kiln", "_kiln.c")).read()
    includes = re.findall(r'#include [<"]([^>"]+)[>"]', src)
    assert set(includes) <= {"Python.h", "kiln/kiln.h", "string.h", "stdio.h", "stdlib.h", "stdint.h"}, includes
