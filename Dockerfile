# The action's image. GitHub builds it when action.yml says `image: Dockerfile`; releases
# point action.yml at the prebuilt ghcr.io image instead (see README, "Prebuilt image").
# BASE_IMAGE is pinned by digest so a rebuild of one commit starts from the same bytes; CI
# overrides it with a Debian base made by debootstrap, because no image registry is reachable
# there (see docs/container.md).
ARG BASE_IMAGE=python:3.11.13-slim-bookworm@sha256:86adf8dbadc3d6e82ee5dd2c74bec2e1c2467cdad47886280501df722372d2e1
FROM ${BASE_IMAGE}

# PYTHONSAFEPATH: the container's working directory is the user's repository
# (/github/workspace), so it must never shadow our modules on sys.path.
# The venv: Debian's own python3 refuses system-wide pip installs (PEP 668), and a `setup`
# input's `pip install` must land where the action's Python imports from, so PATH starts there.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONSAFEPATH=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

# The runner mounts the workspace over the working directory at run time, so this WORKDIR only
# serves the install below. requirements/action.lock pins every package (build backend
# included, through PIP_CONSTRAINT, which also reaches pip's isolated build environment).
# An optional `ca` build secret adds CA certificates for builds behind a TLS-inspecting proxy.
WORKDIR /opt/axl-eval-action
COPY requirements/action.lock ./requirements/action.lock
COPY pyproject.toml README.md action.yml ./
COPY axl_action ./axl_action
COPY templates ./templates
RUN --mount=type=secret,id=ca \
    python3 -m venv /opt/venv && \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi && \
    PIP_CONSTRAINT=requirements/action.lock pip install .

# No USER: GitHub runs container actions as root and mounts the workspace for root.
ENTRYPOINT ["/opt/venv/bin/axl-eval-action"]
