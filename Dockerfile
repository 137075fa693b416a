FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY pyproject.toml README.md ./
COPY tossim ./tossim
COPY migrations ./migrations
COPY web ./web
COPY docs ./docs
# Extras to install; the GPU worker builds with EXTRAS=server,vllm.
ARG EXTRAS=server
RUN pip install ".[${EXTRAS}]"

EXPOSE 8000
CMD ["tossim", "serve", "--host", "0.0.0.0", "--port", "8000"]
