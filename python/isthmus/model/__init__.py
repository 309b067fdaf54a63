# isthmus/model: collective cost models (LogGP), algorithm schedules, and their fit to measurements.
