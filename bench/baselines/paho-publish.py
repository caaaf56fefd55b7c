# Baseline: a Python paho-mqtt publisher doing the same as one `mam-publish` (it stands for the
# Python toolkit users run today): connect, two QoS 1 publishes, disconnect.
import sys
import paho.mqtt.client as mqtt

host, port = sys.argv[1], int(sys.argv[2])
try:
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
except AttributeError:  # paho-mqtt 1.x
    client = mqtt.Client()
client.connect(host, port)
client.loop_start()
client.publish('bench/paho/events', '{"seq":1}', qos=1).wait_for_publish()
client.publish('bench/paho/state', '{"seq":1}', qos=1, retain=True).wait_for_publish()
client.disconnect()
client.loop_stop()
