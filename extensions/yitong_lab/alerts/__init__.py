"""Alert rules, email routes, silences and history (admins): the SDK calls (``sdk.AlertCalls``)."""
