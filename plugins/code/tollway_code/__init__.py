"""tollway's code-generation product: QR codes and linear barcodes at ``/v1/code``."""
