"""tollway's public QR code API: keyless image and JSON endpoints at ``/api/qr``."""
