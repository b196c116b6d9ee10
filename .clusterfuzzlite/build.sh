#!/bin/bash -eu
# ClusterFuzzLite entry point: the project's OSS-Fuzz build script.
exec "$SRC/libcluster/tests/fuzz/oss-fuzz/build.sh"
