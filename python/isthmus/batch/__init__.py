# isthmus/batch: sites owned by a batch system (Slurm): the request a site file makes, the
# site's scheduler reached over ssh, the submit-time check, co-allocation and job records.
