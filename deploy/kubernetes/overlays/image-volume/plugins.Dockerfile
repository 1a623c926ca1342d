# An image of plugins for the image-volume overlay: the .wasm files at its
# root, nothing else (it is mounted, never run). Build it from a directory
# holding the components:
#   buildah bud --storage-driver vfs --isolation chroot -f plugins.Dockerfile \
#       -t localhost/windlass-plugins:0.1.0 DIR_WITH_WASM_FILES
FROM scratch
COPY *.wasm /
