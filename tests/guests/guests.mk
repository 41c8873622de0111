test-guests:
