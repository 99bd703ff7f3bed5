"""What runs start from: datasets (upload, preview, formats) and base models, and the bundled samples registered at
start-up."""
