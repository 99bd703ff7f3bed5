"""CSV cells that a spreadsheet opens as text, never as a formula (OWASP's rule against CSV injection)."""

# A spreadsheet evaluates a cell that starts with one of these: `=HYPERLINK("http://x","y")` as a run's name becomes a
# link in the file of whoever opens the export, a DDE payload runs a command. Tab and carriage return are on OWASP's
# list because some spreadsheets strip them and read what follows.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def text_cell(text: str) -> str:
    """`text` (someone's name, tag, key or param) as a cell: after a single quote when it starts with a formula
    trigger, so that it is read as the text it is. The csv writer then quotes it as it quotes any cell."""
    return "'" + text if text.startswith(FORMULA_TRIGGERS) else text
