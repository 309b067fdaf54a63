# isthmus/launch/__init__.py: everything needed to turn a job description into running sites.
