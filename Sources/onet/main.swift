print("onet")
