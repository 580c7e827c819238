"""The kernel report: a roofline chart of an optimize run with its candidates, failures,
profile and search history, as one self-contained HTML page (``data``: what it shows;
``chart``: the SVG, drawn with matplotlib; ``page``: the HTML)."""
