# One image for both services; the commands are the same ones the tests run.
# The wheel is built where a compiler is (ingest/_syscore_src/, the C core of the truss/strace
# parsers); the image that runs it has none.
FROM python:3.11-slim AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md ./
COPY kb ./kb
COPY bot ./bot
COPY ingest ./ingest
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
WORKDIR /app
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels \
    && python -c "from ingest import _syscore"
ENV PERFKB_DATA_DIR=/data \
    PERFKB_HOST=0.0.0.0 \
    PERFKB_PORT=8000
VOLUME ["/data"]
EXPOSE 8000
CMD ["sh", "-c", "perfkb init && perfkb serve --host 0.0.0.0 --port 8000"]
