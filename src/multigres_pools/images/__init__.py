"""The images the install bundle and the pool pods name, built here from Debian packages and pinned
sources only (`make images`, docs/install.md "Build the images").

Layers, each in its own module: `steps` (running a build step, its errors), `debian` (the slim
Debian bases, made with mmdebstrap), `buildah` (the OCI builder), `inputs` (what goes into a build
context, each with a content key), `catalog` (the images and where their names come from), `build`
(the content-keyed cache around all of it) and `__main__` (the command line).
"""
