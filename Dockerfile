# The action's image. GitHub builds it when action.yml says `image: Dockerfile`; releases
# point action.yml at the prebuilt ghcr.io image instead (see README, "Prebuilt image").
FROM python:3.11.13-slim-bookworm

# PYTHONSAFEPATH: the container's working directory is the user's repository
# (/github/workspace), so it must never shadow our modules on sys.path.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONSAFEPATH=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# The runner mounts the workspace over the working directory at run time, so this WORKDIR only
# serves the install below, which is README's Quick start command verbatim.
WORKDIR /opt/axl-eval-action
COPY pyproject.toml README.md action.yml ./
COPY axl_action ./axl_action
COPY templates ./templates
RUN pip install .

# No USER: GitHub runs container actions as root and mounts the workspace for root.
ENTRYPOINT ["/usr/local/bin/axl-eval-action"]
