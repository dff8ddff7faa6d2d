"""tollway's analytics product: the reports every product registers, at ``/v1/analytics``,
with CSV and PDF exports behind signed download URLs."""
