"""Secrets kept out of everything treadle stores or shows: which variables are
secret, and the redactor that every transcript, log and screen line goes through."""
