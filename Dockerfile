FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY backend ./backend
COPY migrations ./migrations
# The CPU build of torch keeps the image small; GPU hosts can build with TORCH_INDEX set to a CUDA index.
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
RUN pip install --no-cache-dir --extra-index-url ${TORCH_INDEX} -e .
ENV TUNELAB_DATA_DIR=/data
EXPOSE 8000
CMD ["tunelab", "api", "--host", "0.0.0.0", "--port", "8000"]
