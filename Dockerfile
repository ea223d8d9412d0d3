# One image for both services; the commands are the same ones the tests run.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY kb ./kb
COPY bot ./bot
COPY ingest ./ingest
RUN pip install --no-cache-dir .
ENV PERFKB_DATA_DIR=/data \
    PERFKB_HOST=0.0.0.0 \
    PERFKB_PORT=8000
VOLUME ["/data"]
EXPOSE 8000
CMD ["sh", "-c", "perfkb init && perfkb serve --host 0.0.0.0 --port 8000"]
