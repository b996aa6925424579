"""Git access for the indexing pipeline: URL safety, cloning/fetching with dulwich, reading trees."""
