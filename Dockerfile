# windlass as a container image: one static (musl) binary in an otherwise
# empty image, so nothing is pulled to build it.
#
# Build it with `cargo xtask image`: it compiles
# `--target x86_64-unknown-linux-musl --release`, puts the binary alone in a
# build context (target/image/context/) and runs
#   buildah bud --storage-driver vfs --isolation chroot -f Dockerfile target/image/context
# (any OCI builder works the same way: `docker build -f Dockerfile target/image/context`).
#
# At run time (deploy/kubernetes does all of this):
# - it runs as uid/gid 65532, never root;
# - it writes nothing to the root filesystem, so it can be mounted read-only;
# - the precompiled-plugin cache goes to --cache-dir, which must be on a
#   writable volume (an emptyDir): the host creates the directory itself,
#   private (mode 700), because whoever can write there can make it run
#   native code;
# - plugins are read from /plugins (a ConfigMap or an image volume);
# - /metrics, /healthz, /readyz and /plugins are served on port 9464.
FROM scratch

COPY windlass /usr/local/bin/windlass

USER 65532:65532
EXPOSE 9464

LABEL org.opencontainers.image.title="windlass" \
      org.opencontainers.image.description="A Kubernetes controller host for WebAssembly plugins" \
      org.opencontainers.image.licenses="Apache-2.0"

ENTRYPOINT ["/usr/local/bin/windlass"]
CMD ["run", "--plugins=/plugins", "--cache-dir=/var/cache/windlass/artifacts", "--admin=0.0.0.0:9464"]
