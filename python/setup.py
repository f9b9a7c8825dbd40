"""Builds kiln's Python package: the CPython extension kiln._kiln (kiln/_kiln.c, C only)
over libkiln.so and the public header include/kiln/kiln.h.

Where kiln comes from:
  * a build tree (the default): the header from KILN_INCLUDE_DIR (default ../include
    beside this file) and libkiln.so from KILN_BUILD_DIR (default ../build; the library
    is looked for there and below). The extension gets an rpath to the library's
    directory, so the installed module finds libkiln.so without LD_LIBRARY_PATH:
        make && pip install ./python
        KILN_BUILD_DIR=$PWD/build-release pip install ./python
  * an installed kiln (make install): KILN_USE_PKG_CONFIG=1 takes the flags from
    `pkg-config --cflags --libs kiln` (PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig for a
    prefix pkg-config does not search), with an rpath to kiln's libdir.
"""

import os
import re
import shlex
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    sys.stderr.write("kiln setup.py: error: %s\n" % msg)
    raise SystemExit(1)


def header_version(include_dirs):
    for d in include_dirs:
        header = os.path.join(d, "kiln", "kiln.h")
        if os.path.isfile(header):
            text = open(header, encoding="utf-8").read()
            parts = [re.search(r"#define KILN_VERSION_%s (\d+)" % k, text) for k in ("MAJOR", "MINOR", "PATCH")]
            if all(parts):
                return ".".join(p.group(1) for p in parts)
    return None


def find_library(build_dir):
    """The directory holding libkiln.so: build_dir itself or a directory below it."""
    for d in (build_dir, os.path.join(build_dir, "lib"), os.path.join(build_dir, "src"),
              os.path.join(build_dir, "src", "api")):
        if os.path.exists(os.path.join(d, "libkiln.so")):
            return d
    for d, subdirs, files in os.walk(build_dir):
        subdirs[:] = sorted(s for s in subdirs if s != "CMakeFiles" and not s.startswith("python"))
        if "libkiln.so" in files:
            return d
    return None


def from_build_tree():
    include = os.path.abspath(os.environ.get("KILN_INCLUDE_DIR") or os.path.join(HERE, "..", "include"))
    build = os.path.abspath(os.environ.get("KILN_BUILD_DIR") or os.path.join(HERE, "..", "build"))
    if not os.path.isfile(os.path.join(include, "kiln", "kiln.h")):
        fail("no kiln/kiln.h under %s: set KILN_INCLUDE_DIR to kiln's include directory "
             "(or KILN_USE_PKG_CONFIG=1 for an installed kiln)" % include)
    libdir = find_library(build) if os.path.isdir(build) else None
    if not libdir:
        fail("no libkiln.so in %s: build kiln first (make) or set KILN_BUILD_DIR to the CMake build "
             "directory (or KILN_USE_PKG_CONFIG=1 for an installed kiln)" % build)
    return dict(include_dirs=[include], library_dirs=[libdir], libraries=["kiln"],
                extra_link_args=["-Wl,-rpath," + libdir])


def from_pkg_config():
    def pkg(*args):
        try:
            out = subprocess.run(["pkg-config"] + list(args) + ["kiln"], check=True, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, universal_newlines=True)
        except FileNotFoundError:
            fail("KILN_USE_PKG_CONFIG=1 but pkg-config is not installed")
        except subprocess.CalledProcessError as e:
            fail("pkg-config %s kiln failed (is kiln installed? PKG_CONFIG_PATH=%s): %s" % (
                " ".join(args), os.environ.get("PKG_CONFIG_PATH", ""), e.stderr.strip()))
        return out.stdout.strip()

    cfg = dict(include_dirs=[], library_dirs=[], libraries=[], extra_compile_args=[], extra_link_args=[])
    for flag in shlex.split(pkg("--cflags")):
        if flag.startswith("-I"):
            cfg["include_dirs"].append(flag[2:])
        else:
            cfg["extra_compile_args"].append(flag)
    for flag in shlex.split(pkg("--libs")):
        if flag.startswith("-L"):
            cfg["library_dirs"].append(flag[2:])
        elif flag.startswith("-l"):
            cfg["libraries"].append(flag[2:])
        else:
            cfg["extra_link_args"].append(flag)
    libdirs = cfg["library_dirs"] or [pkg("--variable=libdir")]
    cfg["extra_link_args"] += ["-Wl,-rpath," + d for d in libdirs]
    return cfg


class always_build_ext(build_ext):
    """Relinks every time: the extension's rpath names the libkiln found by this run, and
    setuptools would otherwise keep an up-to-date object linked against an earlier one."""

    def finalize_options(self):
        super().finalize_options()
        self.force = True


use_pkg_config = os.environ.get("KILN_USE_PKG_CONFIG", "") not in ("", "0")
config = from_pkg_config() if use_pkg_config else from_build_tree()
version = header_version(config["include_dirs"] + ["/usr/local/include", "/usr/include"]) or "0.0.0"

setup(
    version=version,
    cmdclass={"build_ext": always_build_ext},
    ext_modules=[Extension("kiln._kiln", sources=["kiln/_kiln.c"],
                           extra_compile_args=["-std=c11", "-Wall", "-Wextra"] + config.pop("extra_compile_args", []),
                           **config)],
)
