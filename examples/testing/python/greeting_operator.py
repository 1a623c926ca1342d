"""A Kopf operator: for every Greeting, a ConfigMap holding its message,
owned by the Greeting (so deleting the Greeting deletes it)."""
import kopf
from kubernetes import client


@kopf.on.create("example.com", "v1", "greetings")
def create_fn(spec, name, namespace, body, **_):
    cm = {
        "metadata": {"name": f"greeting-{name}"},
        "data": {"message": f"Hello, {spec.get('name', 'world')}!"},
    }
    kopf.adopt(cm, owner=body)
    client.CoreV1Api().create_namespaced_config_map(namespace, cm)
    return {"configMap": cm["metadata"]["name"]}
