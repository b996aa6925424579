"""Exact (literal) and regex code search, and the query language every search entry point parses.

``query_language`` turns the search box's text into filters and patterns; ``patterns`` compiles
them into line matchers (literals, and RE2 regexes that run in linear time); ``candidates`` asks
PostgreSQL's trigram index which files may match; ``engine`` verifies them line by line and pages
the answer; ``dispatch`` decides which mode a request runs in (hybrid search for plain questions).
"""
