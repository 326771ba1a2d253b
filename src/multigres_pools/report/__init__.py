"""`multigres-pools status`: the incident screen of one shard (`command.py` is the program).

`gather.py` does the I/O (`shard_facts` and `plane_ask` + `plane_facts` fill a `model.Report`);
`verdict.py` judges it, `screen.py` and `as_json.py` show it; all but the I/O are pure.
"""
